// Density heatmaps: each plane of a density picture (`{side, species: {id: {scale,
// data}}, resource}`: base64 bytes, row-major, density = byte / 255 x scale) drawn into a
// side x side canvas, one colour per species, scaled up by CSS.

const BACKGROUND = [241, 243, 239];

/** The bytes of one plane. */
export function planeBytes(plane) {
  const raw = atob(plane.data);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i += 1) out[i] = raw.charCodeAt(i);
  return out;
}

/** "#rrggbb" -> [r, g, b]. */
export function rgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** Draw one plane into `canvas` in `colour` (a byte of 0 is the background). */
export function drawPlane(canvas, plane, side, colour) {
  if (canvas.width !== side) canvas.width = side;
  if (canvas.height !== side) canvas.height = side;
  const g = canvas.getContext("2d");
  const image = g.createImageData(side, side);
  const bytes = planeBytes(plane);
  const [r, gg, b] = rgb(colour);
  for (let i = 0; i < side * side; i += 1) {
    const v = (bytes[i] ?? 0) / 255;
    const k = 4 * i;
    image.data[k] = BACKGROUND[0] + (r - BACKGROUND[0]) * v;
    image.data[k + 1] = BACKGROUND[1] + (gg - BACKGROUND[1]) * v;
    image.data[k + 2] = BACKGROUND[2] + (b - BACKGROUND[2]) * v;
    image.data[k + 3] = 255;
  }
  g.putImageData(image, 0, 0);
}

// Drawing a puzzle board on a canvas: every object by its noun (its own colour and shape),
// every word as a labelled tile, the YOU objects ringed. Used by the player page and the
// level editor. No dependencies.
//
//   import { drawBoard, fitCell } from "/puzzle/render.js";
//   drawBoard(canvas, board, cell)   // board: {width, height, objects, you: [ids]}

// The engine's vocabulary (actors/puzzle/words.py; the page test checks they agree).
export const NOUNS = ["baba", "keke", "flag", "rock", "wall", "skull", "lava", "goop", "grass",
  "floor", "love", "water", "key", "door", "box", "tile", "plate", "gate", "hole", "tree",
  "star", "ice"];
export const PROPERTIES = ["you", "win", "stop", "push", "pull", "move", "sink", "defeat",
  "hot", "melt", "open", "shut", "weak", "float"];
export const OPERATORS = ["is", "and", "not"];
export const WORDS = [...NOUNS, "text", ...PROPERTIES, ...OPERATORS];

// noun -> [colour, shape, layer]: layer 0 lies on the floor (drawn first, fills the cell),
// 1 stands on it.
export const NOUN_STYLE = {
  baba: ["#f4efe6", "creature", 1], keke: ["#e5533d", "creature", 1],
  flag: ["#f2d94e", "flag", 1], rock: ["#b98b58", "rock", 1], wall: ["#56657a", "brick", 0],
  skull: ["#d14545", "skull", 1], lava: ["#ee7a2b", "waves", 0], goop: ["#6bab4e", "drop", 1],
  grass: ["#3f8a3c", "tuft", 0], floor: ["#474d57", "slab", 0], love: ["#f07fb5", "heart", 1],
  water: ["#3e86d6", "waves", 0], key: ["#ecc94b", "key", 1], door: ["#a8553f", "door", 1],
  box: ["#b07c47", "crate", 1], tile: ["#8c93a0", "inset", 0], plate: ["#a9b3c0", "ring", 0],
  gate: ["#8b7bea", "bars", 1], hole: ["#07080a", "pit", 0], tree: ["#2f9958", "tree", 1],
  star: ["#fbe57c", "star", 1], ice: ["#a9def3", "diamond", 0],
};
export const BOARD_BG = "#1b1f25";
const GRID = "#262b33";
const YOU_RING = "#ffe066";
const WORD_BG = "#2a2f38";
const PROPERTY_INK = "#f5a742";
const OPERATOR_INK = "#f4f4f4";

/** The largest whole cell size (CSS px) that fits a `w` x `h` board in the given box. */
export function fitCell(w, h, maxWidth, maxHeight) {
  return Math.max(8, Math.floor(Math.min(maxWidth / w, maxHeight / h, 72)));
}

/** The width (CSS px) a board has inside `frame`: its content box. */
export function boardRoom(frame) {
  const style = getComputedStyle(frame);
  return frame.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
}

/** Call `redraw` again, at most once a frame, whenever the room for a board changes: the
 *  width inside `frame` (a resize, a phone turned) or the window's height. */
export function refitOnResize(frame, redraw) {
  let pending = false;
  let seen = "";
  const refit = () => {
    pending = false;
    const now = `${boardRoom(frame)} ${window.innerHeight}`;
    if (now === seen) return; // the frame only grew taller: its board did that
    seen = now;
    redraw();
  };
  const schedule = () => {
    if (!pending) requestAnimationFrame(refit);
    pending = true;
  };
  new ResizeObserver(schedule).observe(frame);
  window.addEventListener("resize", schedule);
}

/** Size the canvas for a board at `cell` CSS px per cell (sharp on high-density screens). */
export function sizeCanvas(canvas, board, cell) {
  const ratio = window.devicePixelRatio || 1;
  canvas.style.width = `${board.width * cell}px`;
  canvas.style.height = `${board.height * cell}px`;
  canvas.width = Math.round(board.width * cell * ratio);
  canvas.height = Math.round(board.height * cell * ratio);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  return ctx;
}

/** Draw `board` into `canvas` with `cell` CSS px per cell; `marks` (optional) maps "x,y" to
 * a colour drawn as a cell outline (the editor's diagnostics). */
export function drawBoard(canvas, board, cell, marks = null) {
  const ctx = sizeCanvas(canvas, board, cell);
  ctx.fillStyle = BOARD_BG;
  ctx.fillRect(0, 0, board.width * cell, board.height * cell);
  ctx.strokeStyle = GRID;
  ctx.lineWidth = 1;
  for (let x = 1; x < board.width; x += 1) line(ctx, x * cell, 0, x * cell, board.height * cell);
  for (let y = 1; y < board.height; y += 1) line(ctx, 0, y * cell, board.width * cell, y * cell);
  const you = new Set(board.you ?? []);
  // Floor things first, then objects, then words, then YOU on top (board order within each).
  const rank = (o) => (you.has(o.id) ? 3 : o.word !== undefined ? 2 : NOUN_STYLE[o.noun]?.[2] ?? 1);
  const items = board.objects.map((o, i) => [rank(o), i, o]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (const [, , o] of items) {
    const x = o.x * cell;
    const y = o.y * cell;
    if (o.word !== undefined) drawWord(ctx, o.word, x, y, cell);
    else drawObject(ctx, o.noun, o.facing, x, y, cell);
    if (you.has(o.id)) {
      ctx.strokeStyle = YOU_RING;
      ctx.lineWidth = Math.max(2, cell / 14);
      roundRect(ctx, x + 2, y + 2, cell - 4, cell - 4, cell / 5);
      ctx.stroke();
    }
  }
  for (const [key, colour] of Object.entries(marks ?? {})) {
    const [x, y] = key.split(",").map(Number);
    ctx.strokeStyle = colour;
    ctx.lineWidth = Math.max(2, cell / 10);
    ctx.setLineDash([cell / 6, cell / 10]);
    ctx.strokeRect(x * cell + 1.5, y * cell + 1.5, cell - 3, cell - 3);
    ctx.setLineDash([]);
  }
}

function line(ctx, x0, y0, x1, y1) {
  ctx.beginPath();
  ctx.moveTo(x0 + 0.5, y0 + 0.5);
  ctx.lineTo(x1 + 0.5, y1 + 0.5);
  ctx.stroke();
}

function roundRect(ctx, x, y, w, h, r) {
  ctx.beginPath();
  ctx.moveTo(x + r, y);
  ctx.arcTo(x + w, y, x + w, y + h, r);
  ctx.arcTo(x + w, y + h, x, y + h, r);
  ctx.arcTo(x, y + h, x, y, r);
  ctx.arcTo(x, y, x + w, y, r);
  ctx.closePath();
}

/** `colour` (#rrggbb) mixed halfway to white when it is too dark to read on a word tile. */
function legible(colour) {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16));
  if (0.2126 * r + 0.7152 * g + 0.0722 * b >= 110) return colour;
  return `rgb(${[r, g, b].map((v) => Math.round((v + 255) / 2)).join(",")})`;
}

/** A word: a dark tile with its name in capitals, coloured by what the word is (a noun's
 * word in its noun's colour, properties orange, operators white). */
export function drawWord(ctx, word, x, y, cell) {
  const noun = NOUN_STYLE[word];
  const ink = noun ? legible(noun[0]) : word === "text" ? "#d9d2ff"
    : OPERATORS.includes(word) ? OPERATOR_INK : PROPERTY_INK;
  ctx.fillStyle = WORD_BG;
  roundRect(ctx, x + cell * 0.06, y + cell * 0.06, cell * 0.88, cell * 0.88, cell * 0.14);
  ctx.fill();
  ctx.strokeStyle = ink;
  ctx.lineWidth = Math.max(1.5, cell / 24);
  ctx.stroke();
  const label = word.toUpperCase();
  let size = cell * 0.42;
  ctx.font = `700 ${size}px system-ui, sans-serif`;
  const room = cell * 0.78;
  const width = ctx.measureText(label).width;
  if (width > room) {
    size *= room / width;
    ctx.font = `700 ${size}px system-ui, sans-serif`;
  }
  ctx.fillStyle = ink;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillText(label, x + cell / 2, y + cell / 2 + size * 0.05);
}

/** An object: its noun's shape in its noun's colour. */
export function drawObject(ctx, noun, facing, x, y, cell) {
  const [colour, shape] = NOUN_STYLE[noun] ?? ["#cccccc", "rock"];
  const c = cell;
  const cx = x + c / 2;
  const cy = y + c / 2;
  ctx.fillStyle = colour;
  ctx.strokeStyle = colour;
  ctx.lineWidth = Math.max(1.5, c / 16);
  switch (shape) {
    case "creature": {
      roundRect(ctx, x + c * 0.18, y + c * 0.22, c * 0.64, c * 0.6, c * 0.24);
      ctx.fill();
      const look = { right: 0.08, left: -0.08, up: 0, down: 0 }[facing] ?? 0.08;
      ctx.fillStyle = BOARD_BG;
      for (const dx of [-0.12, 0.12]) dot(ctx, cx + c * (dx + look), cy - c * 0.13, c * 0.06);
      break;
    }
    case "flag":
      ctx.fillRect(x + c * 0.26, y + c * 0.16, c * 0.07, c * 0.7);
      ctx.beginPath();
      ctx.moveTo(x + c * 0.33, y + c * 0.16);
      ctx.lineTo(x + c * 0.8, y + c * 0.32);
      ctx.lineTo(x + c * 0.33, y + c * 0.5);
      ctx.fill();
      break;
    case "rock":
      ctx.beginPath();
      ctx.moveTo(x + c * 0.2, y + c * 0.72);
      ctx.lineTo(x + c * 0.28, y + c * 0.36);
      ctx.lineTo(x + c * 0.5, y + c * 0.22);
      ctx.lineTo(x + c * 0.76, y + c * 0.34);
      ctx.lineTo(x + c * 0.82, y + c * 0.72);
      ctx.closePath();
      ctx.fill();
      break;
    case "brick":
      ctx.fillRect(x + 1, y + 1, c - 2, c - 2);
      ctx.strokeStyle = BOARD_BG;
      ctx.lineWidth = Math.max(1, c / 24);
      line(ctx, x, y + c / 2, x + c, y + c / 2);
      line(ctx, x + c / 2, y, x + c / 2, y + c / 2);
      line(ctx, x + c / 4, y + c / 2, x + c / 4, y + c);
      line(ctx, x + (3 * c) / 4, y + c / 2, x + (3 * c) / 4, y + c);
      break;
    case "skull":
      dot(ctx, cx, cy - c * 0.04, c * 0.3);
      ctx.fillRect(cx - c * 0.16, cy + c * 0.14, c * 0.32, c * 0.18);
      ctx.fillStyle = BOARD_BG;
      dot(ctx, cx - c * 0.11, cy - c * 0.06, c * 0.07);
      dot(ctx, cx + c * 0.11, cy - c * 0.06, c * 0.07);
      break;
    case "waves":
      ctx.globalAlpha = 0.85;
      ctx.fillRect(x, y, c, c);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = BOARD_BG;
      for (const k of [0.35, 0.65]) {
        ctx.beginPath();
        ctx.moveTo(x + c * 0.12, y + c * k);
        ctx.quadraticCurveTo(x + c * 0.31, y + c * (k - 0.12), x + c * 0.5, y + c * k);
        ctx.quadraticCurveTo(x + c * 0.69, y + c * (k + 0.12), x + c * 0.88, y + c * k);
        ctx.stroke();
      }
      break;
    case "drop":
      ctx.beginPath();
      ctx.ellipse(cx, cy + c * 0.12, c * 0.32, c * 0.2, 0, 0, 2 * Math.PI);
      ctx.fill();
      dot(ctx, cx - c * 0.1, cy - c * 0.12, c * 0.1);
      break;
    case "tuft":
      for (const dx of [-0.22, 0, 0.22]) {
        line(ctx, cx + c * dx, y + c * 0.8, cx + c * (dx - 0.08), y + c * 0.35);
        line(ctx, cx + c * dx, y + c * 0.8, cx + c * (dx + 0.08), y + c * 0.4);
      }
      break;
    case "slab":
      ctx.fillRect(x + 1, y + 1, c - 2, c - 2);
      break;
    case "heart":
      ctx.beginPath();
      ctx.moveTo(cx, y + c * 0.8);
      ctx.bezierCurveTo(x - c * 0.05, y + c * 0.45, x + c * 0.25, y + c * 0.1, cx, y + c * 0.35);
      ctx.bezierCurveTo(x + c * 0.75, y + c * 0.1, x + c * 1.05, y + c * 0.45, cx, y + c * 0.8);
      ctx.fill();
      break;
    case "key":
      ctx.beginPath();
      ctx.arc(x + c * 0.32, cy, c * 0.16, 0, 2 * Math.PI);
      ctx.stroke();
      ctx.fillRect(x + c * 0.46, cy - c * 0.04, c * 0.36, c * 0.08);
      ctx.fillRect(x + c * 0.7, cy, c * 0.07, c * 0.16);
      break;
    case "door":
      ctx.fillRect(x + c * 0.22, y + c * 0.12, c * 0.56, c * 0.78);
      ctx.fillStyle = "#f2d94e";
      dot(ctx, x + c * 0.66, cy + c * 0.06, c * 0.05);
      break;
    case "crate":
      ctx.strokeRect(x + c * 0.16, y + c * 0.16, c * 0.68, c * 0.68);
      line(ctx, x + c * 0.16, y + c * 0.16, x + c * 0.84, y + c * 0.84);
      line(ctx, x + c * 0.84, y + c * 0.16, x + c * 0.16, y + c * 0.84);
      break;
    case "inset":
      ctx.strokeRect(x + c * 0.08, y + c * 0.08, c * 0.84, c * 0.84);
      ctx.fillRect(x + c * 0.3, y + c * 0.3, c * 0.4, c * 0.4);
      break;
    case "ring":
      ctx.beginPath();
      ctx.ellipse(cx, cy, c * 0.36, c * 0.26, 0, 0, 2 * Math.PI);
      ctx.lineWidth = Math.max(2, c / 9);
      ctx.stroke();
      break;
    case "bars":
      for (const k of [0.22, 0.42, 0.62, 0.82]) ctx.fillRect(x + c * (k - 0.05), y + c * 0.1, c * 0.08, c * 0.8);
      ctx.fillRect(x + c * 0.12, y + c * 0.1, c * 0.76, c * 0.08);
      break;
    case "pit":
      ctx.beginPath();
      ctx.ellipse(cx, cy, c * 0.4, c * 0.3, 0, 0, 2 * Math.PI);
      ctx.fill();
      ctx.strokeStyle = "#5b6270";
      ctx.stroke();
      break;
    case "tree":
      ctx.fillRect(cx - c * 0.05, y + c * 0.6, c * 0.1, c * 0.28);
      ctx.beginPath();
      ctx.moveTo(cx, y + c * 0.1);
      ctx.lineTo(x + c * 0.8, y + c * 0.64);
      ctx.lineTo(x + c * 0.2, y + c * 0.64);
      ctx.fill();
      break;
    case "star":
      ctx.beginPath();
      for (let k = 0; k < 10; k += 1) {
        const r = (k % 2 ? 0.16 : 0.38) * c;
        const a = -Math.PI / 2 + (k * Math.PI) / 5;
        ctx.lineTo(cx + r * Math.cos(a), cy + r * Math.sin(a));
      }
      ctx.fill();
      break;
    case "diamond":
      ctx.globalAlpha = 0.8;
      ctx.beginPath();
      ctx.moveTo(cx, y + c * 0.1);
      ctx.lineTo(x + c * 0.9, cy);
      ctx.lineTo(cx, y + c * 0.9);
      ctx.lineTo(x + c * 0.1, cy);
      ctx.fill();
      ctx.globalAlpha = 1;
      break;
    default:
      dot(ctx, cx, cy, c * 0.3);
  }
}

function dot(ctx, x, y, r) {
  ctx.beginPath();
  ctx.arc(x, y, r, 0, 2 * Math.PI);
  ctx.fill();
}

/** RGBA of the canvas pixel at the centre of cell (x, y) for `cell` CSS px per cell. */
export function pixelAt(canvas, cell, x, y) {
  const ratio = canvas.width / (canvas.style.width ? parseFloat(canvas.style.width) : canvas.width);
  const px = Math.floor((x + 0.5) * cell * ratio);
  const py = Math.floor((y + 0.5) * cell * ratio);
  return Array.from(canvas.getContext("2d").getImageData(px, py, 1, 1).data);
}

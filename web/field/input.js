// Zoom and pan on the board frame: the wheel zooms about the cursor; one pointer (mouse,
// pen or a finger) drags; two fingers pinch to zoom about their midpoint and drag with it.
// The frame has `touch-action: none`, so the browser leaves touches to this code.

/** Wire `frame`'s input to `renderer` (canvas pixels per CSS pixel from `canvas`). */
export function wireInput(frame, canvas, renderer) {
  const scale = () => canvas.width / frame.getBoundingClientRect().width; // px per CSS px
  const local = (e) => {
    const r = frame.getBoundingClientRect();
    return [(e.clientX - r.left) * scale(), (e.clientY - r.top) * scale()];
  };

  frame.addEventListener("wheel", (e) => {
    e.preventDefault();
    const [x, y] = local(e);
    renderer.zoomAt(e.deltaY < 0 ? 1.2 : 1 / 1.2, x, y);
  }, { passive: false });

  const pointers = new Map(); // pointerId -> [x, y] in canvas pixels
  let pinch = null; // {dist, mid} of the two pointers at the last move

  const twoOf = () => {
    const [[ax, ay], [bx, by]] = [...pointers.values()];
    return { dist: Math.hypot(bx - ax, by - ay), mid: [(ax + bx) / 2, (ay + by) / 2] };
  };

  frame.addEventListener("pointerdown", (e) => {
    pointers.set(e.pointerId, local(e));
    frame.setPointerCapture(e.pointerId);
    frame.classList.add("dragging");
    pinch = pointers.size === 2 ? twoOf() : null;
  });
  frame.addEventListener("pointermove", (e) => {
    const last = pointers.get(e.pointerId);
    if (!last) return;
    const now = local(e);
    pointers.set(e.pointerId, now);
    if (pointers.size === 1) {
      renderer.panBy(now[0] - last[0], now[1] - last[1]);
    } else if (pointers.size === 2 && pinch) {
      const next = twoOf();
      renderer.panBy(next.mid[0] - pinch.mid[0], next.mid[1] - pinch.mid[1]);
      if (pinch.dist > 0 && next.dist > 0) renderer.zoomAt(next.dist / pinch.dist, ...next.mid);
      pinch = next;
    }
  });
  const up = (e) => {
    pointers.delete(e.pointerId);
    pinch = pointers.size === 2 ? twoOf() : null;
    if (!pointers.size) frame.classList.remove("dragging");
  };
  frame.addEventListener("pointerup", up);
  frame.addEventListener("pointercancel", up);
}

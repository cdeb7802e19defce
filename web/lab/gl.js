// The lab's compile gate and renderer, shared by the arena, the judging page and the
// gallery: the prelude and an organism's source compiled into a fragment shader and linked
// with a full-screen quad, then drawn with u_time (seconds, wrapped to a 20-second loop),
// u_res (the canvas backing store, measured from the live element) and u_audio (from the
// page's `audio()`, zero unless it says otherwise).
//
// A drawing counts only once the GPU has finished frames: each frame is fenced, and an
// organism is proven after PROVE_MS of frames that completed. Loss of the context is never
// a verdict: `onLost` tells the page, which deals afresh.

import { PRELUDE } from "/lab/prelude.js";

export const LOOP_SECONDS = 20;
export const PROVE_MS = 300;
export const SILENT = Object.freeze([0, 0, 0, 0]);
const VERTEX = "#version 300 es\nin vec2 p;\nvoid main() { gl_Position = vec4(p, 0.0, 1.0); }\n";
const MAX_FENCES = 2; // frames in flight: a slow organism is not fed more work than it ends

/** The stored error of a failed compile or link: the first non-blank line of its log. */
export function firstLine(log) {
  const line = String(log ?? "").split(/\r\n|\r|\n/).map((x) => x.trim()).find(Boolean);
  return line ?? "compile or link failed with an empty info log";
}

/** A copy of `body` with a guard around its main: the organism's main renamed, and a new
 * main that calls it, then clamps its colour into range and blacks out NaNs. The public
 * page compiles this copy first (the pristine body gets one further attempt if it fails). */
export function instrument(body) {
  const renamed = body.replace(/\bvoid(\s+)main(\s*)\(/g, "void$1pd_organism_main$2(");
  return `${renamed}\nvoid main() {\n  pd_organism_main();\n` +
    "  fragColor = clamp(fragColor, 0.0, 1.0);\n" +
    "  if (any(isnan(fragColor))) fragColor = vec4(0.0, 0.0, 0.0, 1.0);\n}\n";
}

/** One canvas that compiles, links and draws organisms. */
export class Stage {
  // `size` [w, h] fixes the backing store (an off-screen stage, as the gallery's); without
  // it the store follows the element's laid-out size.
  constructor(canvas, { audio = () => SILENT, onLost = () => {}, size = null } = {}) {
    this.canvas = canvas;
    this.audio = audio;
    this.size = size;
    this.lost = false;
    this.frame = null; // the running draw loop's request id
    this.gl = canvas.getContext("webgl2", { antialias: false, premultipliedAlpha: false });
    canvas.addEventListener("webglcontextlost", (event) => {
      event.preventDefault();
      this.lost = true;
      this.stop();
      onLost(this);
    });
    if (!this.gl) {
      this.lost = true;
      return;
    }
    const gl = this.gl;
    this.vertex = this._shader(gl.VERTEX_SHADER, VERTEX).shader;
    this.quad = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, this.quad);
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array([-1, -1, 1, -1, -1, 1, 1, 1]), gl.STATIC_DRAW);
  }

  _shader(type, source) {
    const gl = this.gl;
    const shader = gl.createShader(type);
    gl.shaderSource(shader, source);
    gl.compileShader(shader);
    if (gl.getShaderParameter(shader, gl.COMPILE_STATUS)) return { shader };
    const log = gl.getShaderInfoLog(shader);
    gl.deleteShader(shader);
    return { log };
  }

  /** Compile prelude + `body` and link it: {program} or {stage: "compile"|"link", log}
   * (or {lost: true} when the context is gone, which is no verdict). */
  compile(body) {
    const gl = this.gl;
    if (this.lost || !gl || gl.isContextLost()) return { lost: true };
    const fragment = this._shader(gl.FRAGMENT_SHADER, PRELUDE + body);
    if (!fragment.shader) {
      return gl.isContextLost() ? { lost: true } : { stage: "compile", log: fragment.log };
    }
    const program = gl.createProgram();
    gl.attachShader(program, this.vertex);
    gl.attachShader(program, fragment.shader);
    gl.bindAttribLocation(program, 0, "p");
    gl.linkProgram(program);
    gl.deleteShader(fragment.shader);
    if (!gl.getProgramParameter(program, gl.LINK_STATUS)) {
      const log = gl.getProgramInfoLog(program);
      gl.deleteProgram(program);
      return gl.isContextLost() ? { lost: true } : { stage: "link", log };
    }
    return { program };
  }

  /** Size the backing store to the element as it is laid out now; [width, height]. */
  measure() {
    if (this.size) {
      [this.canvas.width, this.canvas.height] = this.size;
      return this.size;
    }
    const box = this.canvas.getBoundingClientRect();
    const ratio = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(box.width * ratio));
    const h = Math.max(1, Math.round(box.height * ratio));
    if (this.canvas.width !== w) this.canvas.width = w;
    if (this.canvas.height !== h) this.canvas.height = h;
    return [w, h];
  }

  /** Draw one frame of `program` at `seconds` into the canvas. */
  draw(program, seconds) {
    const gl = this.gl;
    const [w, h] = this.measure();
    gl.viewport(0, 0, w, h);
    gl.useProgram(program);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.quad);
    gl.enableVertexAttribArray(0);
    gl.vertexAttribPointer(0, 2, gl.FLOAT, false, 0, 0);
    gl.uniform1f(gl.getUniformLocation(program, "u_time"), seconds % LOOP_SECONDS);
    gl.uniform2f(gl.getUniformLocation(program, "u_res"), w, h);
    const a = this.audio();
    gl.uniform4f(gl.getUniformLocation(program, "u_audio"), a[0], a[1], a[2], a[3]);
    gl.drawArrays(gl.TRIANGLE_STRIP, 0, 4);
  }

  /** Draw `program` continuously. `onProven()` is called once PROVE_MS of completed
   * frames have passed; the loop goes on until `stop()`. */
  run(program, { onProven = () => {} } = {}) {
    this.stop();
    const gl = this.gl;
    const started = performance.now();
    const fences = [];
    let firstDone = null;
    let completed = 0;
    let proven = false;
    this.drawnMs = 0;
    const tick = (now) => {
      if (this.lost || gl.isContextLost()) return;
      while (fences.length && gl.getSyncParameter(fences[0], gl.SYNC_STATUS) === gl.SIGNALED) {
        gl.deleteSync(fences.shift());
        completed += 1;
        if (firstDone === null) firstDone = now;
      }
      if (fences.length < MAX_FENCES) {
        this.draw(program, (now - started) / 1000);
        fences.push(gl.fenceSync(gl.SYNC_GPU_COMMANDS_COMPLETE, 0));
        gl.flush();
      }
      if (firstDone !== null) this.drawnMs = now - firstDone;
      if (!proven && completed >= 2 && this.drawnMs >= PROVE_MS) {
        proven = true;
        onProven(this.drawnMs);
      }
      this.frame = requestAnimationFrame(tick);
    };
    this.frame = requestAnimationFrame(tick);
    this._fences = fences;
  }

  stop() {
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
    if (this._fences && this.gl && !this.gl.isContextLost()) {
      for (const fence of this._fences) this.gl.deleteSync(fence);
    }
    this._fences = null;
  }

  /** Forget a program (and stop drawing it). */
  release(program) {
    this.stop();
    if (program && this.gl && !this.gl.isContextLost()) this.gl.deleteProgram(program);
  }
}

/** Compile and draw `body` on `stage` until it is proven: resolves {verdict: "ok", ms}
 * after PROVE_MS of completed frames, {verdict: "invalid", stage, log} when it fails to
 * compile or link, {verdict: "lost"} when the context is lost (no verdict). `cancel`
 * (an AbortSignal) stops it with {verdict: "cancelled"}. */
export function prove(stage, body, { signal = null, compiled = null } = {}) {
  return new Promise((resolve) => {
    const result = compiled ?? stage.compile(body);
    if (result.lost) return resolve({ verdict: "lost" });
    if (!result.program) {
      return resolve({ verdict: "invalid", stage: result.stage, log: result.log ?? "" });
    }
    const finish = (value) => {
      signal?.removeEventListener("abort", onAbort);
      clearInterval(watch);
      resolve({ ...value, program: result.program });
    };
    const onAbort = () => finish({ verdict: "cancelled" });
    signal?.addEventListener("abort", onAbort);
    const watch = setInterval(() => { if (stage.lost) finish({ verdict: "lost" }); }, 50);
    stage.run(result.program, { onProven: (ms) => finish({ verdict: "ok", ms }) });
  });
}

/** A sandboxed 520 x 400 frame on a dark ground showing panel `code`, with the
 * Content-Security-Policy the host injects (the page's own policy applies on top). */
export const PANEL_CSP = "default-src 'none'; style-src 'unsafe-inline'";
export const PANEL_SIZE = [520, 400];

export function panelFrame(code) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "");
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.className = "panel-frame";
  frame.width = String(PANEL_SIZE[0]);
  frame.height = String(PANEL_SIZE[1]);
  frame.title = "panel organism";
  frame.srcdoc = "<!doctype html><html><head><meta charset=\"utf-8\">" +
    `<meta http-equiv="Content-Security-Policy" content="${PANEL_CSP}">` +
    "<style>html,body{margin:0;width:520px;height:400px;overflow:hidden;" +
    "background:#0b0f0d;color:#e6ece8}</style></head><body>" + code + "</body></html>";
  return frame;
}

// The shader prelude of the lab's contract (actors/lab/contract.py SHADER_PRELUDE, which a
// test keeps this equal to), prepended to every organism at compile time.
export const PRELUDE = "#version 300 es\nprecision highp float;\nout vec4 fragColor;\n" +
  "uniform float u_time;\nuniform vec2 u_res;\nuniform vec4 u_audio;\n";

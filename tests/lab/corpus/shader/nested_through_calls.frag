float f(vec2 p) { float s = 0.0; for (int i = 0; i < 32; i++) { s += p.x; } return s; }
float g(vec2 p) { float s = 0.0; for (int j = 0; j < 8; j++) { s += f(p); } return s; }
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (int k = 0; k < 64; k++) { s += g(uv); }
    vec3 c = vec3(uv, fract(s));
    fragColor = vec4(c, 1.0);
}

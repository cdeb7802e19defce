const int OCTAVES = 5;
float h(vec2 p) { return fract(sin(dot(p, vec2(12.9898, 78.233))) * 43758.5453); }
float fbm(vec2 p) {
    float v = 0.0;
    for (int i = 0; i < OCTAVES; i++) { v += h(floor(p)) / float(i + 1); p *= 2.0; }
    return v;
}
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    vec3 c = vec3(fbm(uv * 4.0 + u_time * 0.1));
    fragColor = vec4(c, 1.0);
}

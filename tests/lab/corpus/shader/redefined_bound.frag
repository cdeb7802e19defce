#define N 8
#undef N
#define N 1000
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (int i = 0; i < N; i++) { s += 0.001; }
    vec3 c = vec3(uv, s);
    fragColor = vec4(c, 1.0);
}

#define TIMES(n) for (int k = 0; k < n; k++)
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    TIMES(8) { s += 0.1; }
    vec3 c = vec3(uv, s);
    fragColor = vec4(c, 1.0);
}

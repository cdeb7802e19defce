#define REPEAT for
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    REPEAT (int i = 0; i < 1000; i++) { s += 0.001; }
    vec3 c = vec3(uv, s);
    fragColor = vec4(c, 1.0);
}

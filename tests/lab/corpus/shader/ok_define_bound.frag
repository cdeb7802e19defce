#define STEPS 48
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (int i = 0; i < STEPS; i++) { s += sin(uv.x * float(i) + u_time); }
    vec3 c = vec3(s / float(STEPS) * 0.5 + 0.5);
    fragColor = vec4(c, 1.0);
}

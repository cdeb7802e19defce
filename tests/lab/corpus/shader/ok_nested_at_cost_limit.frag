void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (int j = 0; j < 64; j++) {
        for (int i = 0; i < 64; i++) { s += 0.0001 * float(i + j); }
    }
    vec3 c = vec3(fract(s + u_time), uv);
    fragColor = vec4(c, 1.0);
}

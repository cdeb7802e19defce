void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (int k = 0; k < 32; k++) {
        for (int j = 0; j < 16; j++) {
            for (int i = 0; i < 16; i++) { s += 0.0001; }
        }
    }
    vec3 c = vec3(uv, fract(s));
    fragColor = vec4(c, 1.0);
}

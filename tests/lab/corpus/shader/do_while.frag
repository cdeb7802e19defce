void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    int i = 0;
    do { s += 0.1; i++; } while (i < 8);
    vec3 c = vec3(uv, s);
    fragColor = vec4(c, 1.0);
}

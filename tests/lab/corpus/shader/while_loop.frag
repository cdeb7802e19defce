void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    int i = 0;
    while (i < 8) { s += 0.1; i++; }
    vec3 c = vec3(uv, s);
    fragColor = vec4(c, 1.0);
}

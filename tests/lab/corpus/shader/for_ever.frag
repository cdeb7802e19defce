void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (;;) { s += 0.1; if (s > 1.0) break; }
    vec3 c = vec3(uv, s);
    fragColor = vec4(c, 1.0);
}

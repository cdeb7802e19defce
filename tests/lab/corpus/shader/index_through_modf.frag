void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (float t = 0.0; t < 4.0; t += 1.0) { s += modf(1.5, t); }
    vec3 c = vec3(uv, s);
    fragColor = vec4(c, 1.0);
}

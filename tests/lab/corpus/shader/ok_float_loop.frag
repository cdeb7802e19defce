void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (float t = 0.0; t < 1.0; t += 0.05) { s += sin(uv.y * 10.0 * t + u_time); }
    vec3 c = vec3(0.5 + 0.05 * s, uv);
    fragColor = vec4(c, 1.0);
}

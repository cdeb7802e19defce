void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (float t = 0.0; t < 1.0; t += 0.001) { s += t; }
    vec3 c = vec3(uv, fract(s));
    fragColor = vec4(c, 1.0);
}

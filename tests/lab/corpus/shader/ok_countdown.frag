void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (int i = 10; i > 0; i--) { s += uv.x / float(i); }
    vec3 c = vec3(fract(s + u_time * 0.1), uv);
    fragColor = vec4(c, 1.0);
}

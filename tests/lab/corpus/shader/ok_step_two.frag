void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (int i = 0; i < 128; i += 2) { s += sin(float(i) * uv.x + u_time); }
    vec3 c = vec3(0.5 + s / 128.0);
    fragColor = vec4(c, 1.0);
}

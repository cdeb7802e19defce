void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float awhile = sin(u_time);
    vec3 c = vec3(uv, 0.5 + 0.5 * awhile);
    fragColor = vec4(c, 1.0);
}

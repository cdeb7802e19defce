void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    vec3 c = 0.5 + 0.5 * cos(u_time + uv.xyx + vec3(0.0, 2.0, 4.0));
    fragColor = vec4(c, 1.0);
}

void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float my__glow = 0.5 + 0.5 * sin(u_time);
    vec3 c = vec3(uv, my__glow);
    fragColor = vec4(c, 1.0);
}

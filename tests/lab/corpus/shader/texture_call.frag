void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    vec3 c = texture(u_res, uv).rgb;
    fragColor = vec4(c, 1.0);
}

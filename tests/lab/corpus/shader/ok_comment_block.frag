void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    /* a quiet, drifting field of colour */
    vec3 c = vec3(uv.yx, 0.5 + 0.5 * sin(u_time));
    fragColor = vec4(c, 1.0);
}

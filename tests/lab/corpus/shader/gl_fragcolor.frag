void main() {
    gl_FragColor = vec4(gl_FragCoord.xy / u_res, 0.5 + 0.5 * sin(u_time), 1.0);
}

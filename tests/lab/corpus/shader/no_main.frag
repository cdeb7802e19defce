void mainImage(out vec4 c, in vec2 p) {
    c = vec4(p / u_res, 0.5 + 0.5 * sin(u_time), 1.0);
}

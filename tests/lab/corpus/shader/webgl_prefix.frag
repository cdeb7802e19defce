void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float webgl_level = 0.5;
    vec3 c = vec3(uv, webgl_level);
    fragColor = vec4(c, 1.0);
}

void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float x = 1;
    vec3 c = vec3(uv, x);
    fragColor = vec4(c, 1.0);
}

void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    vec3 c = vec3(uv, snoise(uv));
    fragColor = vec4(c, 1.0);
}

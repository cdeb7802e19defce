uniform highp isampler2D u_ids;
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    vec3 c = vec3(uv, 0.5);
    fragColor = vec4(c, 1.0);
}

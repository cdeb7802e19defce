uniform float u_time;
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    vec3 c = vec3(uv, fract(u_time));
    fragColor = vec4(c, 1.0);
}

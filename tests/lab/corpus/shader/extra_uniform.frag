uniform float u_speed;
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    vec3 c = vec3(uv, fract(u_time * u_speed));
    fragColor = vec4(c, 1.0);
}

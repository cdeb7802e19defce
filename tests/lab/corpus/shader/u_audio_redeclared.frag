uniform vec4 u_audio;
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    vec3 c = vec3(uv, u_audio.x);
    fragColor = vec4(c, 1.0);
}

void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float r = length(uv - 0.5) + 0.2 * u_audio.y;
    vec3 c = vec3(0.5 + 0.5 * sin(r * 20.0 - u_time * 2.0), uv.x, uv.y);
    fragColor = vec4(c, 1.0);
}

void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    highp float t = u_time * 0.25;
    mediump vec3 c = vec3(fract(uv * 3.0 + t), 0.4);
    fragColor = vec4(c, 1.0);
}

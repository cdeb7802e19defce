struct Blob { vec2 p; float r; };
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    Blob b = Blob(vec2(0.5) + 0.2 * vec2(cos(u_time), sin(u_time)), 0.2);
    vec3 c = vec3(smoothstep(b.r, b.r - 0.01, length(uv - b.p)), uv);
    fragColor = vec4(c, 1.0);
}

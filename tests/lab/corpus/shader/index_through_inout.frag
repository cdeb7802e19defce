void back(inout int k) { k -= 1; }
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float s = 0.0;
    for (int i = 0; i < 10; i++) { s += 0.01; back(i); }
    vec3 c = vec3(uv, s);
    fragColor = vec4(c, 1.0);
}

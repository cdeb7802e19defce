#define CAT(a, b) a##b
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    float CAT(gl, ow) = 0.5;
    vec3 c = vec3(uv, glow);
    fragColor = vec4(c, 1.0);
}

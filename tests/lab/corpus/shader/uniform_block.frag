uniform Params { float speed; };
void main() {
    vec2 uv = gl_FragCoord.xy / u_res;
    vec3 c = vec3(uv, speed);
    fragColor = vec4(c, 1.0);
}

void main(){fragColor=vec4(1.0);}

stb [%r1+3], 0x7f
ldxw %r0, [%r1]
add %r0, %r2
exit

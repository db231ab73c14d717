mov %r0, 0xc
lsh %r0, 32
sdiv %r0, -4
exit

ldxh %r0, [%r1]
be16 %r0
exit

stdw [%r10-8], 0x41
mov %r1, %r10
add %r1, -8
mov %r2, 1
call 1
call local f
mov %r0, 1
exit
f:
mov %r1, 0
call 5
mov %r0, 2
exit

mov %r0, 10
sub %r0, %r0
mov %r1, 1
mov %r2, 2
mov %r3, 3
mov %r4, 4
mov %r5, 5
mov %r6, 6
mov %r7, 7
mov %r8, 8
mov %r9, 9
# %r0 == 0
jne %r0, 0, exit

add %r0, 23
add %r0, %r7
# %r0 == 30
jne %r0, 30, exit

sub %r0, 13
sub %r0, %r1
# %r0 == 16
jne %r0, 16, exit

mul %r0, 7
mul %r0, %r3
# %r0 == 336
jne %r0, 336, exit

div %r0, 2
div %r0, %r4
# %r0 == 42

exit

mov32 %r0, 0
mov32 %r1, 0x7
jset %r1, 0x8, exit # Not taken

mov32 %r0, 1
mov32 %r1, 0x9
jset %r1, 0x8, +1 # Taken

mov32 %r0, 2 # Skipped

exit

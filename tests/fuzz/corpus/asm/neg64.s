mov32 %r0, 2
neg %r0
exit

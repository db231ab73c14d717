mov %r0, 1
ja +1
label:
exit
# comment
exit

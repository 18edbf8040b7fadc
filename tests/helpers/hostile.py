"""Uploaded text that must stay text wherever it is shown: a question with an image whose error handler runs
script, answers and chunks with `javascript:` links (markdown and HTML), markup in a method name."""


# Uploaded text that must stay text wherever it is shown: a question with an image whose error handler runs script,
# answers and chunks with `javascript:` links (markdown and HTML), markup in a question type and a method name.
IMG = "<img src=x onerror=alert(1)>"


JS_LINK = "[the source](javascript:alert(2))"


A_LINK = '<a href="javascript:alert(3)">the paper</a>'


HOSTILE_METHOD = "<b onmouseover=alert(4)>tuned</b>"

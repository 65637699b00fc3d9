GUESS = 2


def value():
    return GUESS

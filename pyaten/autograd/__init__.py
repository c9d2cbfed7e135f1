"""pyaten.autograd"""

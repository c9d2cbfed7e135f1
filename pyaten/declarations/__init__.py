"""pyaten.declarations"""

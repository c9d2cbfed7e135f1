"""pyaten.native"""

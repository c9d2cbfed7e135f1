"""pyaten.schema"""

from django.http import HttpResponse


def topic_index(request):
    return HttpResponse("TODO")


def topic_detail(request, slug):
    return HttpResponse("TODO")

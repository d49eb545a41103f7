/* What 36 allocations of a node's first ELECTION step cost on cold caches (issue 22;
 * docs/cost.md, "The first step's allocations"): the sizes bench/first_step_allocations.rs
 * found, allocated warm, then after walking 64 MiB (caches and TLB emptied), against only
 * touching the same number of blocks allocated before the walk.
 *
 *     gcc -O2 -o /tmp/cold_malloc bench/cold_malloc.c && /tmp/cold_malloc
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(void){
  /* The 34 of the step (reallocations counted as allocations of their new size). */
  size_t sizes[]={104,104,12,12,128,128,133,192,212,280,280,280,32,352,352,352,368,368,408,456,48,50,62,64,64,64,64,64,8,8,192,24,24,704};
  int n=sizeof(sizes)/sizeof(sizes[0]);
  size_t big=64<<20; char*flush=malloc(big); memset(flush,1,big);
  // some prior heap activity
  void* keep[2000]; for(int i=0;i<2000;i++){keep[i]=malloc(16+(i*37)%600);} for(int i=0;i<2000;i+=2) free(keep[i]);
  double tw=0,tc=0,tt=0; int R=200;
  for(int r=0;r<R;r++){
    void*p[64];
    // warm
    double a=now(); for(int i=0;i<n;i++)p[i]=malloc(sizes[i]); double b=now(); for(int i=0;i<n;i++)free(p[i]);
    tw+=b-a;
    for(size_t k=0;k<big;k+=64)flush[k]++;
    a=now(); for(int i=0;i<n;i++){p[i]=malloc(sizes[i]); ((char*)p[i])[0]=1;} b=now(); for(int i=0;i<n;i++)free(p[i]);
    tc+=b-a;
    for(int i=0;i<n;i++)p[i]=malloc(sizes[i]);
    for(size_t k=0;k<big;k+=64)flush[k]++;
    a=now(); for(int i=0;i<n;i++){((char*)p[i])[0]=1;} b=now(); for(int i=0;i<n;i++)free(p[i]);
    tt+=b-a;
  }
  printf("%d allocations: warm %.2f us; after the walk %.2f us; only touching as many blocks allocated before the walk %.2f us\n",n,tw/R,tc/R,tt/R);
}
